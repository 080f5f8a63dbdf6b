/*
** kruise-lua: small helpers for the host (the Rust engine), over state
** internals that the C API does not expose. They change no VM semantics.
*/

#include "lua.h"
#include "lstate.h"

/*
** Lets the collector start its first cycle only once `headroom' more bytes
** are allocated. A fresh state's threshold is a few times its initial size,
** so building the environment and a short run would otherwise pay for
** incremental collection steps that free nothing.
*/
LUA_API void kruise_gc_delay (lua_State *L, size_t headroom) {
  global_State *g = G(L);
  g->GCthreshold = g->totalbytes + headroom;
}

/* The allocation total at which the next collection step runs. */
LUA_API size_t kruise_gc_threshold (lua_State *L) {
  return G(L)->GCthreshold;
}

LUA_API void kruise_set_gc_threshold (lua_State *L, size_t threshold) {
  G(L)->GCthreshold = threshold;
}
