// How a kvol process sets up glibc's allocator, before its threads start.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvol {

// Settings glibc takes at any time (mallopt). Returns false if glibc refused one.
// - Fast bins off (M_MXFAST = 0): small blocks, once freed, are merged with their neighbours
//   at once instead of waiting in a fast bin. glibc merges what waits there only when a larger
//   block is asked for next in that arena, all of it at once. After an API server or controller
//   has freed a hundred thousand objects' small pieces, that one request takes 10 ms or more:
//   one claim in a hundred bound late. Small blocks are still cached per thread (tcache).
// - A top pad of 64 MiB (M_TOP_PAD): a thread's arena (a 64 MiB region) is made writable whole
//   when glibc creates it. Otherwise glibc makes it writable a page at a time as it grows, one
//   mprotect call per page, about one per bound claim in a busy server. Only what is touched
//   takes memory. Setting a top pad also holds the mmap threshold at its initial 128 KiB.
bool ConfigureAllocator();

// The value of GLIBC_TUNABLES under which a long-running kvol process should run, given the one
// it was started with (null: unset) and the contents of
// /sys/kernel/mm/transparent_hugepage/enabled; nullopt when it should keep what it has.
// That is: glibc.malloc.hugetlb=1 added, where the kernel hands out transparent huge pages to
// programs that ask for them ("[madvise]") and the caller did not choose a hugetlb setting.
std::optional<std::string> HugePageTunables(const char* tunables, std::string_view thp_enabled);

// For the server processes (kvol server, agent, controller-manager), first thing after reading
// the command line, before any thread starts. glibc asks the kernel for transparent huge pages
// for its heaps only when GLIBC_TUNABLES says so as the program starts, so where
// HugePageTunables says to, this executes the program again (same argv, same pid) with that
// setting and the caller's value saved aside. The program executed again comes back here and
// puts the caller's GLIBC_TUNABLES back, so that nothing it starts inherits the setting.
// With the top pad above, a heap fills with 2 MiB pages instead of 4 KiB ones: a page fault
// per 2 MiB instead of per 4 KiB. Page faults are costly on virtual machines that trap page
// table updates (bench/RESULTS.md). Returns if the program cannot be executed again.
void ReexecWithHugePages(char** argv);

}  // namespace kvol
