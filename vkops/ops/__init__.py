"""One package per DML operator (qlmm/, top_k1/, slice1/; one job a module): its descriptor and shape
rules, its tuning and kernel or path rule, its lowering, its NumPy face.

May import: the pure modules (errors, dtypes, tensor, limits, plan, inputs), `vkops.native` (libvkops'
planner: each operator's default plan), `vkops.reference` (the cooperative-matrix self-check's oracle) and `vkops.runtime` (the NumPy faces and self-checks, at call
time through `face_runtime()`, so descriptors, shape rules and lowerings load without it). Never
`vkops.bench`, `vkops.cli`, `vkops.onnx`, the package face `vkops`, nor drivers, vkinfo or kp: device
facts reach a plan as `Limits`. (tests/test_layers.py checks it.)
"""

_RUNTIME = None


def face_runtime():
    """(Call, freeze) for the operators' NumPy faces, imported on their first call (a function-level
    import costs microseconds on every call): the descriptors, shape rules and lowerings import
    without the runtime."""
    global _RUNTIME
    if _RUNTIME is None:
        from ..runtime import Call  # noqa: PLC0415
        from ..runtime.plancache import freeze  # noqa: PLC0415

        _RUNTIME = Call, freeze
    return _RUNTIME
