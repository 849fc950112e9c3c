"""Knobs and contract: what each knob means, resource and variable names, and the expected table and mapping
shape as a pure function of the config. Standard library only; infra, the operations commands and the tests
read it, so a knob's meaning is written once."""
