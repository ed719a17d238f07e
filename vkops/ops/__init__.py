"""One module per DML operator: its descriptor and shape rules, its lowering, its NumPy face."""

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
