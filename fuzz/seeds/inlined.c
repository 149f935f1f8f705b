/* Seed for the dwarf_elf fuzz target: a small program whose debug info
 * has several units, inlined subroutines, and line programs. */
#include <stdio.h>
#include <stdlib.h>

static inline int square(int x) { return x * x; }

static inline int sum_squares(const int *v, int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += square(v[i]);
    return s;
}

__attribute__((noinline)) int work(int n) {
    int *v = malloc(sizeof(int) * (size_t)n);
    if (!v)
        return -1;
    for (int i = 0; i < n; i++)
        v[i] = i;
    int s = sum_squares(v, n);
    free(v);
    return s;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    printf("%d\n", work(n));
    return 0;
}
