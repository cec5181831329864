"""Tests of the command line and the gate: the exit-code contract, bad input, fuzz, signals, catalogue, set-up."""
