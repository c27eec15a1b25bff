#include <stdio.h>
#include "../include/lib.h"
#include "missing.h"

int (*chosen)(int) = shared;

#ifdef FAST
static int plat(void) { return 1; }
#else
static int plat(void) { return 2; }
#endif

int main(void) {
    struct counter c = {0, "c"};
    bump(&c);
    printf("%d\n", shared(LIMIT) + SQUARE(2) + plat());
    printf("%d\n", undeclared() + dup() + a_only() + chosen(1));
    return c.value;
}
