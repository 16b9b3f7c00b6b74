"""iree.runtime's system API: Config, SystemContext, bound modules and the load_* helpers."""

from __future__ import annotations

import os

import numpy as np

from ...errors import ArgumentError, NotFoundError
from .hal import HalDevice, get_first_device
from .invoke import FunctionInvoker
from .vm import VmContext, VmInstance, VmModule, create_hal_module

TARGET_BACKEND_TO_DRIVER = {"llvm-cpu": "local-task", "vmvx": "local-task", "vulkan-spirv": "vulkan"}


class Config:
    """A device, a VM instance and the default modules (the hal module over the device)."""

    def __init__(self, driver_name: str | None = None, *, device: HalDevice | None = None):
        if device is not None and driver_name is not None:
            raise ArgumentError("Either 'device' or 'driver_name' can be specified (not both)")
        self.device = device if device is not None else \
            get_first_device(driver_name.split(",") if driver_name is not None else None)
        self.vm_instance = VmInstance()
        self.default_vm_modules = (create_hal_module(self.vm_instance, self.device),)


def normalize_value(value):
    """What iree.runtime passes for a Python value: arrays, with Python ints and floats as
    32-bit arrays (lists, tuples, dicts and None unchanged)."""
    if value is None or isinstance(value, (list, tuple, dict)):
        return value
    array = np.asarray(value)
    if isinstance(value, (bool, int, float)):
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype == np.int64:
            array = array.astype(np.int32)
    return array


class BoundModule:
    """A module of a SystemContext: functions by item or attribute."""

    def __init__(self, context: "SystemContext", vm_module: VmModule):
        self._context = context
        self._vm_module = vm_module
        self._functions: dict[str, FunctionInvoker] = {}

    @property
    def name(self) -> str:
        return self._vm_module.name

    @property
    def vm_module(self) -> VmModule:
        return self._vm_module

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, name: str) -> FunctionInvoker:
        fn = self._functions.get(name)
        if fn is None:
            vm_function = self._vm_module.lookup_function(name)
            if vm_function is None:
                raise NotFoundError(f"Function '{name}' not found in module '{self}'")
            fn = self._functions[name] = FunctionInvoker(self._context.vm_context, self._context.config.device,
                                                         vm_function)
        return fn

    def __repr__(self):
        return f"<BoundModule {self._vm_module!r}>"


class BoundModules(dict):
    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class SystemContext:
    """A VmContext with the config's default modules plus `vm_modules` (static), or with
    modules added later by add_vm_module(s) (dynamic, when `vm_modules` is None)."""

    def __init__(self, vm_modules=None, config: Config | None = None):
        self._config = config if config is not None else Config()
        self._is_dynamic = vm_modules is None
        modules = tuple(self._config.default_vm_modules) + (() if vm_modules is None else tuple(vm_modules))
        self._vm_context = VmContext(self._config.vm_instance, modules)
        self._bound_modules = BoundModules((m.name, BoundModule(self, m)) for m in modules)

    @property
    def vm_context(self) -> VmContext:
        return self._vm_context

    @property
    def is_dynamic(self) -> bool:
        return self._is_dynamic

    @property
    def config(self) -> Config:
        return self._config

    @property
    def instance(self) -> VmInstance:
        return self._config.vm_instance

    @property
    def modules(self) -> BoundModules:
        return self._bound_modules

    def add_module_dependency(self, name: str, minimum_version: int = 0) -> None:
        self._vm_context.register_modules([VmModule.resolve_module_dependency(self.instance, name, minimum_version)])

    def add_vm_modules(self, vm_modules) -> None:
        if not self._is_dynamic:
            raise ArgumentError("Cannot 'add_module' on a static context")
        for m in vm_modules:
            if m.name in self._bound_modules:
                raise ArgumentError(f"Attempt to register duplicate VmModule: '{m.name}'")
        self._vm_context.register_modules(vm_modules)
        for m in vm_modules:
            self._bound_modules[m.name] = BoundModule(self, m)

    def add_vm_module(self, vm_module: VmModule) -> None:
        self.add_vm_modules((vm_module,))


def load_vm_modules(*vm_modules, config: Config | None = None) -> list[BoundModule]:
    context = SystemContext(vm_modules=vm_modules, config=config)
    return [context.modules[m.name] for m in vm_modules]


def load_vm_module(vm_module: VmModule, config: Config | None = None) -> BoundModule:
    return load_vm_modules(vm_module, config=config)[0]


def _create_config(driver: str | None = None, backend: str | None = None) -> Config:
    if driver is None and backend is None:
        raise ArgumentError("Either 'driver' or 'backend' must be specified, but got 'None' for both.")
    if driver is not None and backend is not None:
        raise ArgumentError("Cannot specify both 'driver' and a 'backend' to infer the driver from.")
    if backend is not None:
        if backend not in TARGET_BACKEND_TO_DRIVER:
            raise NotFoundError(f"unknown target backend {backend!r}")
        driver = TARGET_BACKEND_TO_DRIVER[backend]
    return Config(driver)


def load_vm_flatbuffer(vm_flatbuffer: bytes, *, driver: str | None = None, backend: str | None = None) -> BoundModule:
    config = _create_config(driver=driver, backend=backend)
    return load_vm_module(VmModule.copy_buffer(config.vm_instance, vm_flatbuffer), config)


def load_vm_flatbuffer_file(path, *, driver: str | None = None, backend: str | None = None,
                            destroy_callback=None) -> BoundModule:
    config = _create_config(driver=driver, backend=backend)
    return load_vm_module(VmModule.mmap(config.vm_instance, os.fspath(path), destroy_callback), config)
