"""Tests of search and proof: explore, shrink, reduction, proof plans and units, state cache, footprints, soundness."""
