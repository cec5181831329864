"""raceproof's system models: one package per system, actors as processes, variants as data.

Each package exposes ``VARIANTS``, a configuration dataclass, ``build(world,
variant, config)`` that starts its actors on a World, and its checkers.
"""
