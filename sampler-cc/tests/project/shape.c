#include "shapes.h"

int area(int width, int height)
{
    if (width <= 0 || height <= 0)
        return 0;
    return width * height;
}
