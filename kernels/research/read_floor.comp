#version 450
// Research (bench/research/read_floor.py), planned by no operator: the GPU time of reading a buffer once and
// nothing else, the floor under a memory-bound kernel (a decoding-sized GEMM reads B once). Each workgroup
// XORs a contiguous range of 16-byte words, U loads in flight a lane, and writes its range's XOR as one word
// of Out (so no load is dead code): the XOR of Out is the XOR of In's 32-bit words.
// Host requirements: a power-of-two workgroup (the tree reduction); Out holds one uint per workgroup.
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint U = 8;  // 16-byte loads in flight a lane

layout(push_constant) uniform PC { uint n; } pc;  // 16-byte words of In
layout(binding = 0) readonly buffer In { uvec4 src[]; };
layout(binding = 1) writeonly buffer Out { uint dst[]; };
shared uint part[gl_WorkGroupSize.x];

void main() {
    uint NT = gl_WorkGroupSize.x, t = gl_LocalInvocationID.x;
    uint per = (pc.n + gl_NumWorkGroups.x - 1u) / gl_NumWorkGroups.x;
    uint b = min(gl_WorkGroupID.x * per, pc.n), e = min(b + per, pc.n);
    uvec4 x = uvec4(0u);
    for (uint i = b + t; i < e; i += NT * U) {
        uvec4 w[U];
        [[unroll]] for (uint u = 0u; u < U; ++u) {
            uint j = i + u * NT;
            w[u] = src[j < e ? j : b];  // a clamped index: the data is used below, not where it is loaded
        }
        [[unroll]] for (uint u = 0u; u < U; ++u)
            if (i + u * NT < e) x ^= w[u];
    }
    part[t] = x.x ^ x.y ^ x.z ^ x.w;
    barrier();
    for (uint s = NT / 2u; s > 0u; s >>= 1u) {
        if (t < s) part[t] ^= part[t + s];
        barrier();
    }
    if (t == 0u) dst[gl_WorkGroupID.x] = part[0];
}
