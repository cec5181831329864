"""Tests of the manual: its examples run as printed, its CLI reference is complete, its pages read well."""
