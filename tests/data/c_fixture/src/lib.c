#include "lib.h"

static const int table[] = {1, 2, 3};
int total = 0;

/* Returns n squared,
   plus one. */
int shared(int n) { return SQUARE(n) + 1; }

void bump(struct counter *c) { c->value += shared(c->value); total++; }

static int helper(void) { return table[0]; }

int undeclared(void) { return helper(); }
