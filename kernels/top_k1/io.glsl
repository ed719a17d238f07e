// TOP_K1 keys, addressing, loads and the outputs: what every module that reads the input includes
// after its push block (which must hold flip, axis_stride, inner, K, n_other, o_sizes and o_strides).
// Bindings 0-2: the input (also as 16-byte vectors), the output values and indices (TOPK_NO_OUTPUTS defined:
// the input only, for modules that write no output: gradix_hist.comp, gradix_collect.comp).

layout(binding = 0) readonly buffer Src { uint src[]; };
layout(binding = 0) readonly buffer Src4 { uvec4 src4[]; };   // the same buffer, 16 bytes at a time
#ifndef TOPK_NO_OUTPUTS
layout(binding = 1) buffer OutVal { uint oval[]; };           // atomics for 8/16-bit values
layout(binding = 2) writeonly buffer OutIdx { uint oidx[]; };
#endif

const uint EV = 128u / ELEM_BITS;   // elements per uvec4

// ---- keys --------------------------------------------------------------------------------------
uint make_key(uint raw) {
    uint k;
#if KIND == 0 && ELEM_BITS == 32
    uint b = raw;
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) k = 0xFFFFFFFFu;   // every NaN: one key, above +inf
    else {
        if (b == 0x80000000u) b = 0u;                        // -0.0 ties with +0.0
        k = (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
    }
#elif KIND == 0 && ELEM_BITS == 16
    uint h = raw & 0xFFFFu;                                  // compare the half's bits: exact, no FTZ
    if ((h & 0x7FFFu) > 0x7C00u) k = 0xFFFFu;
    else {
        if (h == 0x8000u) h = 0u;
        k = (h & 0x8000u) != 0u ? (~h & 0xFFFFu) : (h | 0x8000u);
    }
#elif KIND == 1
    k = raw ^ (1u << (ELEM_BITS - 1));                       // signed: flip the sign bit
#else
    k = raw;                                                 // unsigned
#endif
    return k ^ pc.flip;
}

// ---- addressing --------------------------------------------------------------------------------
uint seq_base(uint s) {
    uint off = 0u;
    for (int d = int(pc.n_other) - 1; d >= 0; --d) {
        uint sz = pc.o_sizes[d];
        off += (s % sz) * pc.o_strides[d];
        s /= sz;
    }
    return off;
}

uint load_raw(uint base, uint i) { return LOAD_ELEM(src, base + i * pc.axis_stride); }

// Element e of 16 bytes of packed elements (one uvec4 load); e = 0 of a load_raw value is that value.
// A macro, not a function: a function's uvec4 parameter became a local copy in the SPIR-V.
#if ELEM_BITS == 32
#define VEC_ELEM(w, e) ((w)[e])
#else
#define VEC_ELEM(w, e) bitfieldExtract((w)[(e) / (32u / ELEM_BITS)], int(((e) % (32u / ELEM_BITS)) * ELEM_BITS), ELEM_BITS)
#endif

#ifndef TOPK_NO_OUTPUTS
void write_out(uint s, uint j, uint idx, uint base) {
    uint o = (s / pc.inner) * pc.K * pc.inner + (s % pc.inner) + j * pc.inner;
    oidx[o] = idx;
    uint raw = load_raw(base, idx);
#if ELEM_BITS == 32
    oval[o] = raw;
#else
    // Neighbouring output elements may belong to other sequences (other workgroups): update only
    // this element's bits of the shared word, atomically.
    const uint E = 32u / ELEM_BITS;
    uint sh = (o % E) * ELEM_BITS;
    uint w = o / E;
    atomicAnd(oval[w], ~(((1u << ELEM_BITS) - 1u) << sh));
    atomicOr(oval[w], raw << sh);
#endif
}
#endif
// Keys carry ELEM_BITS significant bits (above them only the INCREASING flip's ones, equal for all).
const uint KEY_BITS_MASK = ELEM_BITS == 32 ? 0xFFFFFFFFu : ((1u << ELEM_BITS) - 1u);
// The key bits from `shift` up: those a digit below them must match its prefix on.
uint bits_above(uint shift) { return shift >= 32u ? 0u : (KEY_BITS_MASK << shift) & KEY_BITS_MASK; }
