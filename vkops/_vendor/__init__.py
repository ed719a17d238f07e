"""kp (Kompute 0.9.0) built with vkops' patch, as `vkops._vendor.kp`: present only in the wheels `make wheels`
builds (setup.py copies the extension here from the patched kp wheel; auditwheel puts the Vulkan loader and
fmt it links in `vkops.libs/`). A source checkout has none and imports the `kp` that `make setup` installed
(vkops.runtime._kp tries this one first)."""
