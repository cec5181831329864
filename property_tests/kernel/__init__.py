"""Tests of the kernel (sim/): the World, choices, primitives, the store and sessions, nodes, history, checkers."""
