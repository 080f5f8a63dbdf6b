/*
** kruise-lua: gopher-lua number semantics for the patched Lua 5.1.5.
** Included at the end of luaconf.h (see patches/gopher.patch); the
** implementations are in kruise_gopher.c.
*/

#ifndef kruise_gopher_h
#define kruise_gopher_h

#include <stddef.h>

/*
** Writes `n' as gopher-lua's tostring does into `s' (at least
** LUAI_MAXNUMBER2STR bytes) and returns the length: integral values in
** [-2^63, 2^63) as integers, NaN/+Inf/-Inf, anything else as Go's
** fmt.Sprint(float64): shortest round-trip digits, exponent form when the
** decimal exponent is < -4 or >= 6.
*/
int kruise_number2str (char *s, double n);

/*
** Converts the `len' bytes at `s' as gopher-lua converts a string operand of
** arithmetic: trim " \t\n", then Go's strconv.ParseInt(s, 0, 64), else Go's
** strconv.ParseFloat(s, 64). Returns 1 and sets *result on success.
*/
int kruise_str2number (const char *s, size_t len, double *result);

/* Go's math.Mod(a, b), moved to the sign of `b' when they differ. */
double kruise_nummod (double a, double b);

#endif
