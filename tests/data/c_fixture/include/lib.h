#ifndef LIB_H
#define LIB_H

#define SQUARE(x) ((x) * (x))
#define LIMIT 10

/* A shared counter. */
struct counter {
    int value;
    const char *name;
};

union number { int i; double d; };

enum colour { RED, GREEN = 2, BLUE };

typedef struct counter counter_t;
typedef struct { int x, y; } point;

int shared(int n);
void bump(struct counter *c);

#endif
