"""Tests of the verdict itself: its vocabulary, its behaviours at their boundaries, error / not-reached / unknown."""
