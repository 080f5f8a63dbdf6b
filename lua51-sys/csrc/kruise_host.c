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
#include "lopcodes.h"
#include "lstate.h"
#include "lstring.h"
#include "ltable.h"
#include "lundump.h"
#include "lvm.h"

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


/*
** The write recorder: while the host has one on (kruise_record_writes), every
** store a script makes into a table (`t[k] = v', a constructor's fields and
** items, rawset, and the C API's stores, so table.insert too) is handed to the
** host's callback with the table, the key (a string or a number; other keys are
** not reported) and the line that made it. Off, the VM pays one test of a NULL
** pointer per store.
*/

typedef void (*kruise_write_fn) (void *ud, const void *table, const char *skey,
                                 size_t slen, lua_Number nkey, int line);

/* Whether instruction `i' sets register `reg' (the registers an instruction
   with an A operand writes: lopcodes.h). */
static int sets_register (Instruction i, int reg) {
  OpCode op = GET_OPCODE(i);
  int a = GETARG_A(i);
  if (!testAMode(op) || reg < a) return 0;
  switch (op) {
    case OP_LOADNIL: return reg <= GETARG_B(i);
    case OP_CALL: return GETARG_C(i) == 0 || reg <= a + GETARG_C(i) - 2;
    case OP_VARARG: return GETARG_B(i) == 0 || reg <= a + GETARG_B(i) - 2;
    case OP_TFORLOOP: return 0;
    default: return reg == a;
  }
}

/* Instructions looked at, at most, to find where a value was made. */
#define VALUE_SCAN_LIMIT 4096

/* The line of the instruction before `at' that last set register `reg', or
   `fallback' when none is found. The compiler gives a NEWTABLE the line of the
   token before the `{' (it is emitted before the brace is read): right for a
   field `b = {', but for a list item the comma ending the item before, so an
   item (`list_item') that is a constructor with fields counts from its first
   field's instruction: `{ name = "x" }' on its own line is that line. */
static int value_line (Proto *p, int at, int reg, int fallback, int list_item) {
  int k, steps = 0;
  for (k = at - 1; k >= 0 && steps < VALUE_SCAN_LIMIT; k--, steps++) {
    Instruction i = p->code[k];
    if (sets_register(i, reg)) {
      if (list_item && GET_OPCODE(i) == OP_NEWTABLE &&
          (GETARG_B(i) != 0 || GETARG_C(i) != 0) && k + 1 < at)
        return getline(p, k + 1);
      return getline(p, k);
    }
  }
  return fallback;
}

/*
** The line of the store the innermost Lua frame is making (a store made by a C
** function, such as table.insert, belongs to the line that called it); 0: none.
** A SETTABLE's own line is where a constructor's field ends (the compiler
** emits it after the value), so for a value made in a temporary register (a
** nested constructor, a call) the line where that value was made counts when
** it is earlier: `b = {' on line 3 closed on line 5 is line 3. A statement's
** SETTABLE carries its first line, earlier than its value's.
*/
static int store_line (lua_State *L) {
  CallInfo *ci;
  for (ci = L->ci; ci > L->base_ci; ci--) {
    if (isLua(ci)) {
      Proto *p = ci_func(ci)->l.p;
      const Instruction *pc = (ci == L->ci) ? L->savedpc : ci->savedpc;
      int at = pcRel(pc, p);
      int line = getline(p, at);
      Instruction i = p->code[at];
      if (ci == L->ci && GET_OPCODE(i) == OP_SETTABLE && !ISK(GETARG_C(i)) &&
          luaF_getlocalname(p, GETARG_C(i) + 1, at) == NULL) {
        int made = value_line(p, at, GETARG_C(i), line, 0);
        if (made < line) line = made;
      }
      return line;
    }
  }
  return 0;
}

static void record_write (lua_State *L, Table *t, const TValue *key, int line) {
  global_State *g = G(L);
  kruise_write_fn fn = (kruise_write_fn)g->kruise_wrec_fn;
  if (fn == NULL) return;
  if (line < 0) line = store_line(L);
  if (ttisstring(key))
    fn(g->kruise_wrec_ud, t, getstr(rawtsvalue(key)), tsvalue(key)->len, 0, line);
  else if (ttisnumber(key))
    fn(g->kruise_wrec_ud, t, NULL, 0, nvalue(key), line);
}

/* Turns the recorder on (`fn' not NULL) or off. */
LUA_API void kruise_record_writes (lua_State *L, kruise_write_fn fn, void *ud) {
  global_State *g = G(L);
  g->kruise_wrec_fn = (void *)fn;
  g->kruise_wrec_ud = ud;
  g->kruise_onwrite = fn ? record_write : NULL;
}

/*
** A SETLIST at instruction `at' stores registers reg+1..reg+n under the keys
** last-n+1..last. Its own line is where the list ends, so each item is given
** the line of the instruction that last set its register before the SETLIST:
** for `{ {...}, "x" }', the line of the item's first field or of "x" (the
** compiler loads an item when the token after it is read, so an item that
** ends the list, with the `}' on a line of its own, gets that line).
*/
void kruise_setlist_writes (lua_State *L, Table *h, int reg, int n, int last,
                            int at) {
  Proto *p = ci_func(L->ci)->l.p;
  int j;
  for (j = 1; j <= n; j++) {
    int line = value_line(p, at, reg + j, getline(p, at), 1);
    TValue key;
    setnvalue(&key, cast_num(last - n + j));
    record_write(L, h, &key, line);
  }
}


/*
** The lost tail calls of the frame at call level `level' (lua_getstack
** counts each as one level above that frame): 0 when there is no such
** frame, it is itself a lost tail call, or it is not a Lua function. Lets a
** traceback step over millions of them at once.
*/
LUA_API int kruise_lost_tail_calls (lua_State *L, int level) {
  lua_Debug ar;
  CallInfo *ci;
  if (!lua_getstack(L, level, &ar) || ar.i_ci == 0) return 0;
  ci = L->base_ci + ar.i_ci;
  return isLua(ci) ? ci->tailcalls : 0;
}
