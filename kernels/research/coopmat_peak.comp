#version 450
// Research (bench/research/coopmat_peak.py), planned by no operator: the int8 cooperative-matrix
// multiply-accumulate rate with no memory traffic, the ceiling a QLinearMatMul kernel could reach.
// Each subgroup loads one s8 16x32 A and one s8 32x16 B fragment (the shapes of qlmm_coopmat.comp) once,
// runs pc.iters rounds of coopMatMulAdd into ACC independent int32 16x16 accumulators (independent chains
// hide the MMA's latency), and stores their sum as its own 16x16 tile of Out (so no work is dead code):
// every tile = ACC * iters * (A x B), modulo 2^32.
// Frag: A row-major (16 rows of 32 bytes), then B column-major (16 columns of 32 bytes), 1 KiB in all.
// Host requirements: subgroup size 32 (workgroup = 32 * subgroups invocations); Out holds
// 256 int32 per subgroup of the grid.
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;  // 32 * subgroups
layout(constant_id = 1) const uint ACC = 4;  // independent accumulators per subgroup

layout(push_constant) uniform PC { uint iters; } pc;
layout(binding = 0) readonly buffer Frag { uvec4 frag[]; };
layout(binding = 1) writeonly buffer Out { int tiles[]; };

void main() {
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> a;
    coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> b;
    coopMatLoad(a, frag, 0u, 2u, gl_CooperativeMatrixLayoutRowMajor);      // strides in uvec4: 32 bytes
    coopMatLoad(b, frag, 32u, 2u, gl_CooperativeMatrixLayoutColumnMajor);
    coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[ACC];
    [[unroll]] for (uint j = 0u; j < ACC; ++j)
        acc[j] = coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0);
    for (uint i = 0u; i < pc.iters; ++i)
        [[unroll]] for (uint j = 0u; j < ACC; ++j)
            acc[j] = coopMatMulAdd(a, b, acc[j]);
    [[unroll]] for (uint j = 1u; j < ACC; ++j)
        acc[0] += acc[j];
    uint tile = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    coopMatStore(acc[0], tiles, 256u * tile, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
