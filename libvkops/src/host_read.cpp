// vkops_read_mapped: a copy out of device memory the host maps uncached (write-combining: a discrete GPU's
// resizable BAR). A plain copy there costs one PCIe round trip per load (~1 us for 32 bytes on the H100 host);
// SSE4.1's streaming loads (MOVNTDQA) fetch a whole 64-byte line per round trip into a streaming-load buffer,
// and the lines of one copy overlap: t.numpy() of 4 KiB 16-17 us instead of 76-80 (docs/tuning/runtime.md, session 32).
#include "vkops.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define VKOPS_STREAM_LOADS 1

__attribute__((target("sse4.1"))) static void stream_copy(void *dst, const void *src, size_t bytes) {
    // A full fence first: the loads below may not be satisfied before the caller's wait for the GPU (WC reads are
    // speculative and streaming loads weakly ordered).
    _mm_mfence();
    __m128i *s = (__m128i *)const_cast<void *>(src);
    char *d = (char *)dst;
    size_t n16 = bytes / 16;
    size_t i = 0;
    for (; i + 4 <= n16; i += 4) {  // a line a step: its four loads from one fill
        __m128i a = _mm_stream_load_si128(s + i), b = _mm_stream_load_si128(s + i + 1);
        __m128i c = _mm_stream_load_si128(s + i + 2), e = _mm_stream_load_si128(s + i + 3);
        _mm_storeu_si128((__m128i *)(d + 16 * i), a);
        _mm_storeu_si128((__m128i *)(d + 16 * i + 16), b);
        _mm_storeu_si128((__m128i *)(d + 16 * i + 32), c);
        _mm_storeu_si128((__m128i *)(d + 16 * i + 48), e);
    }
    for (; i < n16; ++i) _mm_storeu_si128((__m128i *)(d + 16 * i), _mm_stream_load_si128(s + i));
    if (bytes % 16) {  // the last bytes' aligned 16-byte piece: inside the mapping's page (src is 16-byte aligned)
        __m128i t = _mm_stream_load_si128(s + n16);
        std::memcpy(d + 16 * n16, &t, bytes % 16);
    }
}

static bool streams() {  // asked once
    static const bool sse41 = __builtin_cpu_supports("sse4.1");
    return sse41;
}
#endif

extern "C" VKOPS_API void vkops_read_mapped(void *dst, const void *src, size_t bytes) {
#ifdef VKOPS_STREAM_LOADS
    if (streams() && ((uintptr_t)src % 16) == 0) {
        stream_copy(dst, src, bytes);
        return;
    }
#endif
    std::memcpy(dst, src, bytes);
}

extern "C" VKOPS_API int vkops_read_mapped_streams(void) {
#ifdef VKOPS_STREAM_LOADS
    return streams() ? 1 : 0;
#else
    return 0;
#endif
}
