#ifndef SHAPES_H
#define SHAPES_H

int clamp(int value, int low, int high);
const char *sign_name(int value);
int area(int width, int height);

#endif
