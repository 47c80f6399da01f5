/* Four branch sites executed exactly 1, 10, 1,000 and 1,000,000 times per
   run (the tests of issue 19's rates). `sink` is volatile so that every
   test is evaluated; none of them is ever true. */

static volatile int sink;

int main(void)
{
    long i;
    if (sink == 1)
        sink = 2;
    for (i = 0; i < 10; i++)
        if (sink == 3)
            sink = 4;
    for (i = 0; i < 1000; i++)
        if (sink == 5)
            sink = 6;
    for (i = 0; i < 1000000; i++)
        if (sink == 7)
            sink = 8;
    return 0;
}
