// TOP_K1's head, included first by every kernels/top_k1/*.comp: the workgroup size (specialization
// constant 0), the sentinel and the (key, index) order. Needs no push block and no element type.
//
// Every element becomes an order-preserving uint32 key (NaN canonical and highest, -0.0 == +0.0,
// complemented for INCREASING), so one unsigned compare of (key desc, index asc) ranks every dtype
// and makes ties come out stable. Bitonic top-k after Shanbhag, Pirk & Madden (SIGMOD 2018): sort
// runs of Kp = pow2(K) in shared memory, then repeatedly keep the better half of two runs
// (max(A[j], B[j]) of a descending and an ascending run) and rebuild it into a sorted run.
#extension GL_GOOGLE_include_directive : require
#ifndef SHUF
#define SHUF 0
#endif
#ifndef RADIX_SHORT
#define RADIX_SHORT 0  // 1: radix.comp's slim build (top_k1_radix_s[_sg]_*; see there)
#endif
#if SHUF
// SHUF variants (top_k1_*_sg_*): the sorting networks' short strides in registers and subgroup shuffles
// (reg_stage in networks.glsl), for devices that have subgroup shuffles.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;

const uint SENT_IDX = 0xFFFFFFFFu;  // sentinel (key 0, index ~0) ranks below every real element
const uint WG = gl_WorkGroupSize.x;
// Radix select's histogram bins (hist in radix.comp, a subgroup's bins in skey in rows.comp).
// 8-bit digits: 11-bit ones (2048 bins) cost more in occupancy than they saved in passes on an H200.
const uint NBINS = 256u;

// (ka, ia) ranks before (kb, ib): larger key, then smaller index.
bool better(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia < ib); }

uint log2u(uint x) { return uint(findMSB(x)); }
uint pow2_at_least(uint x) { return x <= 1u ? 1u : (1u << (uint(findMSB(x - 1u)) + 1u)); }
