/*
** kruise-lua: gopher-lua number semantics for the patched Lua 5.1.5.
** Written from the documented behaviour of Go's strconv/fmt/math packages
** (see lua51-sys/README.md); no Go code is used.
*/

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kruise_gopher.h"


/* ------------------------------------------------------------------ */
/* number -> string                                                    */
/* ------------------------------------------------------------------ */

/* Decimal digits of a double: value = 0.D1D2...Dnd * 10^dp. */
typedef struct Digits {
  char d[20];
  int nd;
  int dp;
} Digits;

/* Reads "[-]D[.DDD]e[+-]XX" (printf %e output) into `dg'. */
static void read_e (const char *buf, Digits *dg) {
  const char *p = buf;
  int exp10;
  if (*p == '-') p++;
  dg->nd = 0;
  for (; *p != 'e'; p++)
    if (*p != '.') dg->d[dg->nd++] = *p;
  exp10 = atoi(p + 1);
  dg->dp = exp10 + 1;
  while (dg->nd > 1 && dg->d[dg->nd - 1] == '0') dg->nd--;  /* no trailing zeros */
}

/* strtod of the positive decimal in `dg'. */
static double digits_value (const Digits *dg) {
  char buf[48];
  snprintf(buf, sizeof(buf), "0.%.*se%d", dg->nd, dg->d, dg->dp);
  return strtod(buf, NULL);
}

/* Adds one unit in the last place of `dg' (digits all 9 roll over). */
static void digits_increment (Digits *dg) {
  int i = dg->nd - 1;
  while (i >= 0 && dg->d[i] == '9') dg->d[i--] = '0';
  if (i >= 0) dg->d[i]++;
  else {  /* 99..9 -> 100..0: one digit "1" a place higher */
    dg->d[0] = '1';
    dg->nd = 1;
    dg->dp++;
  }
  while (dg->nd > 1 && dg->d[dg->nd - 1] == '0') dg->nd--;
}

/*
** Shortest digits that read back as x (x > 0, finite): the nearest p-digit
** decimal for p = 1, 2, ... 17. At an exact power of two the interval of
** values that round to x is narrower below x than above, so a p-digit
** decimal above x can round-trip when the nearest one (below x) does not;
** that one is tried as well, as Go's shortest algorithm would find it.
*/
static void shortest (double x, Digits *dg) {
  char buf[48];
  int p, e2;
  int pow2 = (frexp(x, &e2) == 0.5);
  for (p = 1; p <= 17; p++) {
    snprintf(buf, sizeof(buf), "%.*e", p - 1, x);
    read_e(buf, dg);
    if (strtod(buf, NULL) == x) return;
    if (pow2 && strtod(buf, NULL) < x) {
      Digits up = *dg;
      digits_increment(&up);
      if (digits_value(&up) == x) { *dg = up; return; }
    }
  }
  /* 17 significant digits always round-trip */
  snprintf(buf, sizeof(buf), "%.16e", x);
  read_e(buf, dg);
}

/* Go's strconv 'g' layout with shortest precision (fmt.Sprint(float64)). */
static int format_g (char *s, double x) {
  Digits dg;
  char *o = s;
  int exp10, i;
  if (x < 0) { *o++ = '-'; x = -x; }
  shortest(x, &dg);
  exp10 = dg.dp - 1;
  if (exp10 < -4 || exp10 >= 6) {  /* d.ddde+XX, at least two exponent digits */
    *o++ = dg.d[0];
    if (dg.nd > 1) {
      *o++ = '.';
      for (i = 1; i < dg.nd; i++) *o++ = dg.d[i];
    }
    o += sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
  else if (dg.dp <= 0) {  /* 0.000ddd */
    *o++ = '0';
    *o++ = '.';
    for (i = dg.dp; i < 0; i++) *o++ = '0';
    for (i = 0; i < dg.nd; i++) *o++ = dg.d[i];
  }
  else {  /* ddd.ddd or ddd000 */
    for (i = 0; i < dg.dp; i++) *o++ = (i < dg.nd) ? dg.d[i] : '0';
    if (dg.nd > dg.dp) {
      *o++ = '.';
      for (i = dg.dp; i < dg.nd; i++) *o++ = dg.d[i];
    }
  }
  *o = '\0';
  return (int)(o - s);
}

int kruise_number2str (char *s, double n) {
  if (n != n) return sprintf(s, "NaN");
  if (isinf(n)) return sprintf(s, n > 0 ? "+Inf" : "-Inf");
  /* gopher-lua prints a value as int64 when int64(v) converts back to v;
     Go on amd64 turns out-of-range values into -2^63, so this is the range */
  if (n >= -9223372036854775808.0 && n < 9223372036854775808.0 && n == floor(n))
    return sprintf(s, "%lld", (long long)n);  /* -0 prints as 0 */
  return format_g(s, n);
}


/* ------------------------------------------------------------------ */
/* string -> number                                                    */
/* ------------------------------------------------------------------ */

static int lower (int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }
static int isdec (int c) { return c >= '0' && c <= '9'; }
static int ishex (int c) { return isdec(c) || (lower(c) >= 'a' && lower(c) <= 'f'); }

/*
** Go's rule for `_' in numbers: only between digits, or between a base
** prefix and a digit (the sign and a 0b/0o/0x prefix are allowed).
*/
static int underscores_ok (const char *s, size_t n) {
  char saw = '^';  /* ^ start, 0 digit or prefix, _ underscore, ! other */
  size_t i = 0;
  int hex = 0;
  if (n >= 1 && (s[0] == '-' || s[0] == '+')) { s++; n--; }
  if (n >= 2 && s[0] == '0' &&
      (lower(s[1]) == 'b' || lower(s[1]) == 'o' || lower(s[1]) == 'x')) {
    i = 2;
    saw = '0';
    hex = (lower(s[1]) == 'x');
  }
  for (; i < n; i++) {
    if (isdec(s[i]) || (hex && ishex(s[i]))) { saw = '0'; continue; }
    if (s[i] == '_') {
      if (saw != '0') return 0;
      saw = '_';
      continue;
    }
    if (saw == '_') return 0;
    saw = '!';
  }
  return saw != '_';
}

/* Go's strconv.ParseInt(s, 0, 64). */
static int parse_int (const char *s, size_t n, double *result) {
  const char *d = s;
  size_t m = n, i = 0;
  int neg = 0, underscores = 0;
  unsigned base = 10;
  uint64_t v = 0;
  if (m > 0 && (d[0] == '+' || d[0] == '-')) { neg = (d[0] == '-'); d++; m--; }
  if (m == 0) return 0;
  if (d[0] == '0') {  /* base prefix; a bare leading 0 means octal */
    if (m >= 3 && lower(d[1]) == 'b') { base = 2; i = 2; }
    else if (m >= 3 && lower(d[1]) == 'o') { base = 8; i = 2; }
    else if (m >= 3 && lower(d[1]) == 'x') { base = 16; i = 2; }
    else { base = 8; i = 1; }
  }
  for (; i < m; i++) {
    int c = (unsigned char)d[i];
    unsigned dv;
    if (c == '_') { underscores = 1; continue; }
    if (isdec(c)) dv = (unsigned)(c - '0');
    else if (lower(c) >= 'a' && lower(c) <= 'z') dv = (unsigned)(lower(c) - 'a' + 10);
    else return 0;
    if (dv >= base) return 0;
    if (v > (UINT64_MAX - dv) / base) return 0;  /* out of range */
    v = v * base + dv;
  }
  if (underscores && !underscores_ok(d, m)) return 0;
  if (!neg && v > (uint64_t)INT64_MAX) return 0;
  if (neg && v > (uint64_t)INT64_MAX + 1) return 0;
  if (neg) *result = (v == (uint64_t)INT64_MAX + 1) ? -9223372036854775808.0
                                                    : (double)(-(int64_t)v);
  else *result = (double)(int64_t)v;  /* never -0 */
  return 1;
}

static int match_fold (const char *s, size_t n, const char *word) {
  size_t i;
  if (strlen(word) != n) return 0;
  for (i = 0; i < n; i++)
    if (lower((unsigned char)s[i]) != word[i]) return 0;
  return 1;
}

/*
** Go's strconv.ParseFloat(s, 64): Go float syntax (decimal, or 0x hex with a
** mandatory p exponent; `_' separators), inf/infinity with an optional sign,
** nan; an overflow to infinity is an error.
*/
static int parse_float (const char *s, size_t n, double *result) {
  const char *d = s;
  size_t m = n, i = 0, j;
  int hex = 0, digits = 0, dot = 0, underscores = 0;
  char stackbuf[128];
  char *clean;
  double v;
  if (m > 0 && (d[0] == '+' || d[0] == '-')) { d++; m--; }
  if (match_fold(d, m, "inf") || match_fold(d, m, "infinity")) {
    *result = (s[0] == '-') ? -HUGE_VAL : HUGE_VAL;
    return 1;
  }
  if (d == s && match_fold(d, m, "nan")) {  /* no sign allowed */
    *result = NAN;
    return 1;
  }
  if (m >= 2 && d[0] == '0' && lower(d[1]) == 'x') { hex = 1; i = 2; }
  for (; i < m; i++) {  /* mantissa */
    int c = (unsigned char)d[i];
    if (c == '_') underscores = 1;
    else if (c == '.') { if (dot) return 0; dot = 1; }
    else if (hex ? ishex(c) : isdec(c)) digits++;
    else break;
  }
  if (digits == 0) return 0;
  if (i < m && lower(d[i]) == (hex ? 'p' : 'e')) {  /* exponent */
    int edigits = 0;
    i++;
    if (i < m && (d[i] == '+' || d[i] == '-')) i++;
    for (; i < m && (isdec(d[i]) || d[i] == '_'); i++) {
      if (d[i] == '_') underscores = 1;
      else edigits++;
    }
    if (edigits == 0) return 0;
  }
  else if (hex) return 0;  /* a hex mantissa needs a p exponent */
  if (i != m) return 0;
  if (underscores && !underscores_ok(s, n)) return 0;
  /* strtod on a copy without underscores */
  clean = (n < sizeof(stackbuf)) ? stackbuf : (char *)malloc(n + 1);
  if (clean == NULL) return 0;
  for (i = 0, j = 0; i < n; i++)
    if (s[i] != '_') clean[j++] = s[i];
  clean[j] = '\0';
  errno = 0;
  v = strtod(clean, NULL);
  if (clean != stackbuf) free(clean);
  if (errno == ERANGE && isinf(v)) return 0;  /* overflow: Go's ErrRange */
  *result = v;
  return 1;
}

int kruise_str2number (const char *s, size_t len, double *result) {
  while (len > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\n')) { s++; len--; }
  while (len > 0 && (s[len-1] == ' ' || s[len-1] == '\t' || s[len-1] == '\n')) len--;
  return parse_int(s, len, result) || parse_float(s, len, result);
}


/* ------------------------------------------------------------------ */
/* arithmetic                                                          */
/* ------------------------------------------------------------------ */

/* gopher-lua's luaModulo (vm.go): v := math.Mod(a, b), then b is added whenever a or b is
** negative (its condition `a < 0 || b < 0 && !(a < 0 && b < 0)` reduces to that), even when
** the remainder is already 0 or has b's sign: -4 % 2 is 2, -3 % -2 is -3, 0 % -1e-05 is
** -1e-05. Go's math.Mod computes the exact remainder with x's sign, as C's fmod does. */
double kruise_nummod (double a, double b) {
  double m = fmod(a, b);
  if (a < 0 || b < 0) m += b;
  return m;
}
