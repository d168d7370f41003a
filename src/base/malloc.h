// How a kvol process sets up glibc's allocator, before its threads start.
#pragma once

namespace kvol {

// Turns off glibc's fast bins (M_MXFAST = 0): small blocks, once freed, are merged with their
// neighbours at once instead of waiting in a fast bin. glibc merges what waits there only when
// a larger block is asked for next in that arena, all of it at once. After an API server or
// controller has freed a hundred thousand objects' small pieces, that one request takes 10 ms
// or more: one claim in a hundred bound late. Small blocks are still cached per thread
// (tcache). Returns false if glibc refused the setting.
bool ConfigureAllocator();

}  // namespace kvol
