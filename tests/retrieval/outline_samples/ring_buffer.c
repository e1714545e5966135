#include <stdlib.h>
#include <string.h>
#include "ring_buffer.h"

#define RB_MIN_CAPACITY 16

/* A fixed-size FIFO of bytes. */
typedef struct {
    unsigned char *data;
    size_t capacity;
    size_t head;
    size_t len;
} ring_buffer;

enum rb_status { RB_OK, RB_FULL, RB_EMPTY };

struct rb_stats {
    size_t pushed;
    size_t popped;
};

typedef int rb_size_t;

static struct rb_stats stats;

/* Allocates a buffer of at least `capacity` bytes; NULL on failure. */
ring_buffer *rb_new(size_t capacity)
{
    ring_buffer *rb = calloc(1, sizeof *rb);
    if (!rb)
        return NULL;
    rb->capacity = capacity < RB_MIN_CAPACITY ? RB_MIN_CAPACITY : capacity;
    rb->data = malloc(rb->capacity);
    return rb;
}

enum rb_status rb_push(ring_buffer *rb, unsigned char byte)
{
    if (rb->len == rb->capacity)
        return RB_FULL;
    rb->data[(rb->head + rb->len++) % rb->capacity] = byte;
    stats.pushed++;
    return RB_OK;
}

enum rb_status rb_pop(ring_buffer *rb, unsigned char *out)
{
    if (rb->len == 0)
        return RB_EMPTY;
    *out = rb->data[rb->head];
    rb->head = (rb->head + 1) % rb->capacity;
    rb->len--;
    stats.popped++;
    return RB_OK;
}

void rb_free(ring_buffer *rb)
{
    free(rb->data);
    free(rb);
}
