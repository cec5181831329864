"""The gate: a catalogue's expectations judged as runs, by ``raceproof check`` and the pytest plugin.

``expectations`` turns "this variant must violate, that one must hold" into
searches and proofs under a profile (``ci``, ``dev``, ``thorough``);
``pytest_plugin`` (the ``pytest11`` entry point) offers the same judgement as
the ``raceproof`` fixture and replays the counterexample database.
"""
