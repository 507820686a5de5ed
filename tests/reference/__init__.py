"""An independent reference for the rules (docs/rules.md), for the property tests to compare
the engine with: `model` says what is legal, where an action leads and what a hand scores, by
brute force and without the engine's helpers; `strategies` builds positions to ask it about.
"""
