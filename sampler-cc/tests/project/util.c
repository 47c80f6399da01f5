#include "shapes.h"

int clamp(int value, int low, int high)
{
    if (value < low)
        return low;
    if (value > high)
        return high;
    return value;
}

const char *sign_name(int value)
{
    return value < 0 ? "negative" : value == 0 ? "zero" : "positive";
}
