"""Errors raised by vkops."""


class ValidationError(ValueError):
    """A descriptor or argument breaks a rule; raised before any GPU work."""


class DeviceLimitError(ValidationError):
    """Valid by the spec, but beyond what the chosen device can bind or address."""
