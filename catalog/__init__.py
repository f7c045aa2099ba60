"""Recipes for well-known public task sets (YAML files beside this one), shipped in the wheel."""
