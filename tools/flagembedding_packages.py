"""Enters FlagEmbedding's packages without running their __init__ files, which import every model
kind and trainer of the library (its LLM rerankers want peft, its trainers `datasets`): each
package named is registered empty, with its folder as __path__, so that importing one module
below them runs only that module and what it imports. The goldens' tools use it to call
FlagEmbedding's own classes unchanged."""
import importlib.util
import pathlib
import sys
import types


def enter(*packages):
    root = pathlib.Path(importlib.util.find_spec("FlagEmbedding").origin).parent
    for name in packages:
        package = types.ModuleType(name)
        package.__path__ = [str(root.joinpath(*name.split(".")[1:]))]
        sys.modules.setdefault(name, package)
