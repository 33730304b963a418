"""Loads one of scripts/'s programs as a module, for its tests: their
names have dashes (site-check.py), which import cannot name."""
import importlib.util
import os


def load(name):
    """The module of scripts/NAME.py."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
