// What the C entry points share: this thread's last error and guard(), which turns exceptions into a
// status and that message (api_plan.cpp defines them).
#pragma once
#include <new>
#include <string>

#include "core.hpp"

namespace vkops {

extern thread_local std::string last_error;
vkops_status set_error(vkops_status s, const std::string &m);
char *dup_string(const std::string &s);  // malloc'ed copy (vkops_free)

// Runs `f`, turning exceptions into a status and this thread's message.
template <class F> vkops_status guard(F &&f) {
    try {
        last_error.clear();
        f();
        return VKOPS_SUCCESS;
    } catch (const Error &e) {
        return set_error(e.status, e.what());
    } catch (const std::bad_alloc &) {
        return set_error(VKOPS_ERROR_OUT_OF_MEMORY, "out of host memory");
    } catch (const std::exception &e) {
        return set_error(VKOPS_ERROR_VALIDATION, e.what());
    }
}

}  // namespace vkops
