// ROWS and RSORT (rows.comp, rsort.comp), which declare subgroup basic + ballot + arithmetic + shuffle
// (vkops.ops.top_k1_paths.ROWS_SUBGROUP_OPS): only these modules need subgroup operations beyond Vulkan
// 1.1's guaranteed basic ones (and the SHUF variants' shuffles).
// Shared memory written by one lane and read by another within the subgroup.
void sg_sync() { subgroupMemoryBarrierShared(); subgroupBarrier(); }
