// TOP_K1 RSORT mode (ROWS modules, MODE_RSORT): one workgroup sorts one whole row of at most RS_E * WG
// elements by a stable LSD radix sort in shared memory (8-bit digits), then writes its first K. For
// large K on short rows (pow2(K) above ROWS' 256), where SEG's bitonic network took about 55
// compare-exchange steps with workgroup barriers a row and radix select still sorted up to 2K entries.
//
// Item e of lane l of subgroup g sits at position p = g * E * SGS + e * SGS + l (E items a lane). The
// positions start as the indices, and each pass orders the items by (digit descending, position), a
// stable order: after the last digit, keys descend and equal keys keep ascending indices.
// A pass first matches every item (the lanes holding the same digit find each other with 8 ballots),
// then counts the items of each digit per subgroup, item by item in order: the lowest lane of a match
// adds their count to its
// subgroup's counter of that digit and leaves the old count in a shared slot for the others (items e and
// e+1 are ordered by a subgroup barrier). One scan over (digit descending, subgroup) turns the counters
// into first positions, and every item is stored at its place. A digit shared by every item (the high
// bytes of narrow keys, constant data) makes the pass the identity: it is skipped.
//
// rs_sh (RS_SH words, sized by the host: ops/top_k1_paths.py): [g * 256 + r] subgroup g's counter of digit
// rank r (r = 255 - digit, so the scan runs in output order), then 2 * WG broadcast slots (two item
// parities, so a slot is rewritten only after every lane has read it), then one total per subgroup.
const uint RS_E = 8u;  // items a lane at most (registers: a key, an index, a match/rank each); 16 ran 5% slower

void rs_match(uint r, out uint cnt, out uint excl, out uint leader) {
    if (gl_SubgroupSize <= 32u) {  // one word of ballot bits: a quarter of the general case's work
        uint m = gl_SubgroupSize == 32u ? 0xFFFFFFFFu : ((1u << gl_SubgroupSize) - 1u);
        [[unroll]] for (uint b = 0u; b < 8u; ++b) {
            bool bit = ((r >> b) & 1u) != 0u;
            uint v = subgroupBallot(bit).x;
            m &= bit ? v : ~v;
        }
        cnt = bitCount(m);
        excl = bitCount(m & gl_SubgroupLtMask.x);
        leader = uint(findLSB(m));
    } else {
        uvec4 m = subgroupBallot(true);
        [[unroll]] for (uint b = 0u; b < 8u; ++b) {
            bool bit = ((r >> b) & 1u) != 0u;
            uvec4 v = subgroupBallot(bit);
            m &= bit ? v : ~v;
        }
        cnt = subgroupBallotBitCount(m);
        excl = subgroupBallotExclusiveBitCount(m);
        leader = subgroupBallotFindLSB(m);
    }
}

void run_rsort(uint s) {
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, SGS = gl_SubgroupSize, NSG = gl_NumSubgroups;
    uint tid = gl_LocalInvocationID.x;
    uint E = (pc.L + WG - 1u) / WG;
    uint n_items = E * WG;
    uint c0 = sg * 256u;                   // this subgroup's counters
    uint bc0 = NSG * 256u;                 // broadcast slots
    uint t0 = bc0 + 2u * WG;               // subgroup totals
    uint slot = sg * SGS + lane;           // the scan's order (gl_LocalInvocationID need not follow subgroups)
    uint p0 = sg * E * SGS + lane;         // position of item 0; item e is at p0 + e * SGS
    uint base = seq_base(s);

    uint k[RS_E], ix[RS_E], rk[RS_E];
    [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
        uint p = p0 + e * SGS;
        bool ok = e < E && p < pc.L;
        k[e] = ok ? make_key(load_raw(base, p)) & KEY_BITS_MASK : 0u;  // padding ranks last (key 0,
        ix[e] = ok ? p : SENT_IDX;                                      // positions after every element)
    }
    for (uint d = lane; d < 256u; d += SGS) rs_sh[c0 + d] = 0u;
    if (tid == 0u) s_flag = 0u;            // ordered before its first use by the barrier after the counts
    sg_sync();

    for (uint sh = 0u; sh < ELEM_BITS; sh += 8u) {
        // Match every item first (ballots only: independent, so they overlap), then count and rank item
        // by item in position order (the part that waits on shared memory).
        [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
            if (e < E) {
                uint cnt, excl, leader;
                rs_match(255u - ((k[e] >> sh) & 255u), cnt, excl, leader);
                rk[e] = cnt | (excl << 8) | (leader << 16);  // each < 256: subgroups of <= 128
            }
        }
        [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
            if (e < E) {
                uint r = 255u - ((k[e] >> sh) & 255u);
                uint leader = rk[e] >> 16;
                uint par = bc0 + (e & 1u) * WG + sg * SGS;
                if (lane == leader) {
                    uint old = rs_sh[c0 + r];
                    rs_sh[c0 + r] = old + (rk[e] & 255u);
                    rs_sh[par + lane] = old;
                }
                sg_sync();
                rk[e] = rs_sh[par + leader] + ((rk[e] >> 8) & 255u);
            }
        }
        barrier();
        // Scan: thread t takes digit ranks [t * RPT, t * RPT + RPT); each counter becomes its subgroup's
        // first position of the digit.
        const uint RPT = WG >= 256u ? 1u : 256u / WG;
        uint tot[4];                           // RPT <= 4: the host's workgroups have >= 64 invocations
        uint mine = 0u;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            tot[j] = 0u;
            uint r = slot * RPT + j;
            if (j < RPT && r < 256u) {
                for (uint g = 0u; g < NSG; ++g) {
                    uint c = rs_sh[g * 256u + r];
                    rs_sh[g * 256u + r] = tot[j];
                    tot[j] += c;
                }
                mine += tot[j];
            }
        }
        uint incl = subgroupInclusiveAdd(mine);
        if (lane == SGS - 1u) rs_sh[t0 + sg] = incl;
        barrier();
        uint first = incl - mine;
        for (uint g = 0u; g < sg; ++g) first += rs_sh[t0 + g];
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            uint r = slot * RPT + j;
            if (j < RPT && r < 256u) {
                if (tot[j] == n_items) s_flag = sh + 1u;  // one digit holds every item: the pass keeps the order
                for (uint g = 0u; g < NSG; ++g) rs_sh[g * 256u + r] += first;
                first += tot[j];
            }
        }
        barrier();
        bool keep = s_flag == sh + 1u;
        if (!keep) {
            [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
                if (e < E) {
                    uint p = rs_sh[c0 + 255u - ((k[e] >> sh) & 255u)] + rk[e];
                    skey[p] = k[e];
                    sidx[p] = ix[e];
                }
            }
        }
        barrier();
        if (!keep) {
            [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
                if (e < E) {
                    k[e] = skey[p0 + e * SGS];
                    ix[e] = sidx[p0 + e * SGS];
                }
            }
        }
        for (uint d = lane; d < 256u; d += SGS) rs_sh[c0 + d] = 0u;
        barrier();                             // skey / sidx are read; counters cleared
    }
    // Item e of this lane is the (p0 + e * SGS)-th best: positions below K are outputs.
    [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
        uint p = p0 + e * SGS;
        if (e < E && p < pc.K) write_out(s, p, ix[e], base);
    }
}
