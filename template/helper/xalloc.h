/* xalloc.h: the helper uses the control plane's allocators that cannot fail
 * (controlplane/base/xalloc.h: xmalloc, xcalloc, xrealloc, xstrdup,
 * xstrndup, xasprintf, cp_oom; they need libc only, and the Makefile links
 * controlplane/base/xalloc.c into the static helper). Sizes computed from
 * input are bounded by the caller before allocating. */
#ifndef HELPER_XALLOC_H
#define HELPER_XALLOC_H

#include "../../controlplane/base/xalloc.h"

#endif
