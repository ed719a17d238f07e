"""Errors raised by vkops.

May import: nothing in vkops (every layer imports this module; the rule allows the other pure modules);
never `vkops.ops`, `vkops.runtime`, `vkops.bench` (nor drivers, vkinfo, kp, the package face `vkops`).
"""


class ValidationError(ValueError):
    """A descriptor or argument breaks a rule; raised before any GPU work."""


class DeviceLimitError(ValidationError):
    """Valid by the spec, but beyond what the chosen device can bind or address."""


class DeviceMemoryError(MemoryError):
    """A device (or host-visible staging) allocation does not fit: beyond vkops' memory budget, beyond
    what the heap has left, or refused by the driver. Raised after freeing idle cached blocks and
    retrying once; tensors already on the device are untouched and the device stays usable."""


class NoDeviceError(ValidationError, OSError):
    """No usable Vulkan device: no loader, no driver (ICD) that works, or no device at the index asked
    for. The message says what is missing and what to do. An OSError (as "no Vulkan" always was) and a
    ValidationError (as the device index check always was)."""
