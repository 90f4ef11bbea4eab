// glibc's malloc tuning (mallopt), which the Glibc module does not export;
// part of the C library itself, so there is nothing to link or install.
#include <malloc.h>
