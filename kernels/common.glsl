// Shared helpers. Every buffer is uint32 words: kp enables no 8/16-bit storage features.
#extension GL_EXT_control_flow_attributes : enable

// Linear workgroup index over a 2-D grid: one dimension holds at most 65535 workgroups.
uint linear_group() { return gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y; }

// Element `i` of a packed array of ELEM_BITS-bit values, zero-extended.
#define LOAD_ELEM(buf, i) (ELEM_BITS == 32 ? buf[(i)] : \
    bitfieldExtract(buf[(i) / (32u / ELEM_BITS)], int(((i) % (32u / ELEM_BITS)) * ELEM_BITS), ELEM_BITS))
