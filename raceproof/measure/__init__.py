"""Measurements, printed and never asserted: ``bench`` (the kernel's and the searches' speed) and ``compare`` (designs against each other)."""
