"""Renderers of histories and figures: plots now; timelines, Markdown and HTML to come."""
