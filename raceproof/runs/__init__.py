"""Runs of a scenario turned into results: JSON fields, repro lines, counterexample files, replays.

``runner`` builds the result every command prints and the counterexample file
it writes; ``counterexamples`` replays a file on its own variant or keyed on
another; ``stories`` places a counterexample's deviations in its timeline for
the reports; ``processes`` starts the child processes (a ZooKeeper JVM, a
Spark driver) so that none outlives raceproof.
"""
