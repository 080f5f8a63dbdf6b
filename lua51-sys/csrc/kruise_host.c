/*
** kruise-lua: helpers for the host (the Rust engine) over state internals
** that the C API does not expose. They change no VM semantics.
*/

#include <string.h>

#include "lua.h"

#include "ldebug.h"
#include "ldo.h"
#include "lfunc.h"
#include "lgc.h"
#include "lmem.h"
#include "lobject.h"
#include "lstate.h"
#include "lstring.h"
#include "ltable.h"
#include "lundump.h"

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

/* Pushes the string whose bytes are at `bytes' (as returned by lua_tolstring
   for a string value), without hashing and looking it up again as
   lua_pushlstring would. The string must be alive (e.g. a key of a table the
   caller holds, with no collection in between). */
LUA_API void kruise_push_string_at (lua_State *L, const char *bytes) {
  TString *ts = cast(TString *, bytes) - 1;  /* getstr(ts) is (ts + 1) */
  setsvalue2s(L, L->top, ts);
  incr_top(L);
}

/* Makes room in the string table for `size' strings at once (a fresh state
   starts with 32 slots and rehashes every string at each doubling). */
LUA_API void kruise_presize_strings (lua_State *L, int size) {
  if (size > G(L)->strt.size) luaS_resize(L, size);
}


/*
** Loading bytecode made by lua_dump in this process. It reads the same format
** as lundump.c and builds the same function, but straight from memory and
** without luaG_checkcode's verification (the code came from our own parser),
** which together were most of the cost of loading a script into each fresh
** state. Bytecode from anywhere else must go through lua_load.
**
** One difference (the engine rewrites lua_dump's output for it): after the
** header comes a table of the chunk's distinct strings (int count, then each
** as size_t length and bytes), and every string of the functions is an int
** index into it (-1: none). Each distinct name is thus interned once per
** state, not once per function that uses it.
*/

typedef struct {
  lua_State *L;
  const char *p, *end;
  Table *strings;  /* the chunk's strings, anchored on the stack */
} Reader;

static void bad (Reader *R) {
  luaO_pushfstring(R->L, "truncated precompiled chunk");
  luaD_throw(R->L, LUA_ERRSYNTAX);
}

static void read_block (Reader *R, void *b, size_t n) {
  if ((size_t)(R->end - R->p) < n) bad(R);
  memcpy(b, R->p, n);
  R->p += n;
}

static int read_byte (Reader *R) {
  if (R->p >= R->end) bad(R);
  return (unsigned char)*R->p++;
}

static int read_int (Reader *R) {
  int x;
  read_block(R, &x, sizeof(x));
  return x;
}

static TString *read_string (Reader *R) {
  int i = read_int(R);
  if (i < 0) return NULL;
  if (i >= R->strings->sizearray) bad(R);
  return rawtsvalue(&R->strings->array[i]);
}

static void read_strings (Reader *R) {
  lua_State *L = R->L;
  int i, n = read_int(R);
  Table *t;
  if (n < 0) bad(R);
  t = luaH_new(L, n, 0);
  sethvalue(L, L->top, t); incr_top(L);  /* keeps them alive */
  for (i = 0; i < n; i++) {
    size_t size;
    read_block(R, &size, sizeof(size));
    if ((size_t)(R->end - R->p) < size) bad(R);
    setsvalue2n(L, &t->array[i], luaS_newlstr(L, R->p, size));
    R->p += size;
  }
  R->strings = t;
}

static Proto *read_function (Reader *R, TString *parent_source) {
  lua_State *L = R->L;
  Proto *f;
  int i, n;
  if (++L->nCcalls > LUAI_MAXCCALLS) bad(R);
  f = luaF_newproto(L);
  setptvalue2s(L, L->top, f); incr_top(L);  /* keeps it alive */
  f->source = read_string(R);
  if (f->source == NULL) f->source = parent_source;
  f->linedefined = read_int(R);
  f->lastlinedefined = read_int(R);
  f->nups = (lu_byte)read_byte(R);
  f->numparams = (lu_byte)read_byte(R);
  f->is_vararg = (lu_byte)read_byte(R);
  f->maxstacksize = (lu_byte)read_byte(R);
  n = read_int(R);
  f->code = luaM_newvector(L, n, Instruction);
  f->sizecode = n;
  read_block(R, f->code, n * sizeof(Instruction));
  n = read_int(R);
  f->k = luaM_newvector(L, n, TValue);
  f->sizek = n;
  for (i = 0; i < n; i++) setnilvalue(&f->k[i]);
  for (i = 0; i < n; i++) {
    TValue *o = &f->k[i];
    switch (read_byte(R)) {
      case LUA_TNIL: setnilvalue(o); break;
      case LUA_TBOOLEAN: setbvalue(o, read_byte(R) != 0); break;
      case LUA_TNUMBER: {
        lua_Number x;
        read_block(R, &x, sizeof(x));
        setnvalue(o, x);
        break;
      }
      case LUA_TSTRING: setsvalue2n(L, o, read_string(R)); break;
      default: bad(R);
    }
  }
  n = read_int(R);
  f->p = luaM_newvector(L, n, Proto *);
  f->sizep = n;
  for (i = 0; i < n; i++) f->p[i] = NULL;
  for (i = 0; i < n; i++) f->p[i] = read_function(R, f->source);
  n = read_int(R);
  f->lineinfo = luaM_newvector(L, n, int);
  f->sizelineinfo = n;
  read_block(R, f->lineinfo, n * sizeof(int));
  n = read_int(R);
  f->locvars = luaM_newvector(L, n, LocVar);
  f->sizelocvars = n;
  for (i = 0; i < n; i++) f->locvars[i].varname = NULL;
  for (i = 0; i < n; i++) {
    f->locvars[i].varname = read_string(R);
    f->locvars[i].startpc = read_int(R);
    f->locvars[i].endpc = read_int(R);
  }
  n = read_int(R);
  f->upvalues = luaM_newvector(L, n, TString *);
  f->sizeupvalues = n;
  for (i = 0; i < n; i++) f->upvalues[i] = NULL;
  for (i = 0; i < n; i++) f->upvalues[i] = read_string(R);
  L->top--;
  L->nCcalls--;
  return f;
}

static void load_trusted (lua_State *L, void *ud) {
  Reader *R = (Reader *)ud;
  char header[LUAC_HEADERSIZE];
  Proto *tf;
  Closure *cl;
  int i;
  luaC_checkGC(L);
  luaU_header(header);
  if ((size_t)(R->end - R->p) < LUAC_HEADERSIZE ||
      memcmp(header, R->p, LUAC_HEADERSIZE) != 0) bad(R);
  R->p += LUAC_HEADERSIZE;
  read_strings(R);
  tf = read_function(R, luaS_newliteral(L, "=?"));
  cl = luaF_newLclosure(L, tf->nups, hvalue(gt(L)));
  cl->l.p = tf;
  for (i = 0; i < tf->nups; i++) cl->l.upvals[i] = luaF_newupval(L);
  setclvalue(L, L->top - 1, cl);  /* in the place of the strings */
}

/* Like lua_load of `size' bytes of bytecode at `buf': 0 and the function on
   the stack, or an error status and its message. */
LUA_API int kruise_load_trusted (lua_State *L, const char *buf, size_t size) {
  Reader R;
  R.L = L;
  R.p = buf;
  R.end = buf + size;
  R.strings = NULL;
  return luaD_pcall(L, load_trusted, &R, savestack(L, L->top), L->errfunc);
}
