#version 450
// Research (bench/research/read_floor.py --strips), planned by no operator: the GPU time of reading a K x N
// byte matrix (row-major) in column strips, as a decoding-sized GEMM's workgroups read B: a workgroup owns
// W16 16-byte pieces of each row (a strip W16 * 16 bytes wide) over a K range, U rows in flight a lane, and
// writes its XOR as one word of Out. Does the width of a workgroup's piece of a row set the read rate?
// Host requirements: a power-of-two workgroup that W16 divides; Out holds one uint per workgroup.
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint U = 8;    // 16-byte loads in flight a lane
layout(constant_id = 2) const uint W16 = 2;  // 16-byte pieces a workgroup reads of each row

layout(push_constant) uniform PC { uint rows; uint row16; uint splits; } pc;  // row16: 16-byte words a row
layout(binding = 0) readonly buffer In { uvec4 src[]; };
layout(binding = 1) writeonly buffer Out { uint dst[]; };
shared uint part[gl_WorkGroupSize.x];

void main() {
    uint NT = gl_WorkGroupSize.x, t = gl_LocalInvocationID.x;
    uint strips = pc.row16 / W16, strip = gl_WorkGroupID.x % strips, ks = gl_WorkGroupID.x / strips;
    uint per = (pc.rows + pc.splits - 1u) / pc.splits;
    uint b = min(ks * per, pc.rows), e = min(b + per, pc.rows);
    uint RP = NT / W16, col = strip * W16 + t % W16;
    uvec4 x = uvec4(0u);
    for (uint r = b + t / W16; r < e; r += RP * U) {
        uvec4 w[U];
        [[unroll]] for (uint u = 0u; u < U; ++u) {
            uint j = r + u * RP;
            w[u] = src[(j < e ? j : b) * pc.row16 + col];
        }
        [[unroll]] for (uint u = 0u; u < U; ++u)
            if (r + u * RP < e) x ^= w[u];
    }
    part[t] = x.x ^ x.y ^ x.z ^ x.w;
    barrier();
    for (uint s = NT / 2u; s > 0u; s >>= 1u) {
        if (t < s) part[t] ^= part[t + s];
        barrier();
    }
    if (t == 0u) dst[gl_WorkGroupID.x] = part[0];
}
