"""A context: module instances that import from each other, initialized in order."""

from __future__ import annotations

from ...errors import UnsupportedError
from ...frontend.module import Import
from .interface import Function, ModuleInstance


class Context:
    """Holds module instances; later modules import from earlier ones (IREE's rule)."""

    def __init__(self):
        self.instances: list[ModuleInstance] = []
        self._by_name: dict[str, ModuleInstance] = {}

    def add(self, instance_or_factory) -> ModuleInstance:
        """Adds a module: a ready ModuleInstance, or something with `instantiate(context)`.

        Bytecode modules resolve their imports against the modules already present and run
        their `__init` export right away, as IREE does when a context is created.
        """
        if isinstance(instance_or_factory, ModuleInstance):
            instance = instance_or_factory
        else:
            instance = instance_or_factory.instantiate(self)
        self._check_dependencies(instance)
        self.instances.append(instance)
        self._by_name[instance.name] = instance
        instance.initialize()
        return instance

    def module(self, name: str) -> ModuleInstance | None:
        return self._by_name.get(name)

    def _check_dependencies(self, instance) -> None:
        loaded = getattr(instance, "loaded", None)
        if loaded is None:
            return
        for dep in loaded.module.dependencies:
            have = self._by_name.get(dep.name)
            if have is None:
                if dep.optional:
                    continue
                raise UnsupportedError(
                    f"module '{instance.name}' depends on module '{dep.name}' (version >= "
                    f"{dep.minimum_version}), which this context does not provide")
            if have.version < dep.minimum_version:
                raise UnsupportedError(
                    f"module '{instance.name}' needs '{dep.name}' version >= {dep.minimum_version}, "
                    f"this runtime provides version {have.version}")

    def resolve_import(self, imp: Import) -> Function | None:
        """The function an import names, checked against its calling convention."""
        module_name, _, function_name = imp.name.partition(".")
        provider = self._by_name.get(module_name)
        fn = provider.lookup(function_name) if provider is not None else None
        if fn is None:
            if imp.optional:
                return None
            where = f"module '{module_name}' has no function '{function_name}'" if provider else \
                f"no module named '{module_name}' is in the context"
            raise UnsupportedError(f"missing import {imp.name} ({imp.signature.cconv.text}): {where}")
        if fn.cconv.text != imp.signature.cconv.text:
            raise UnsupportedError(
                f"import {imp.name} expects calling convention {imp.signature.cconv.text} but "
                f"'{module_name}' provides {fn.cconv.text}")
        return fn

    def close(self) -> None:
        for inst in reversed(self.instances):
            inst.close()
        self.instances.clear()
        self._by_name.clear()
