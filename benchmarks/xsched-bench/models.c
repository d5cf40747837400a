/* xsched-bench: tasks and model layers.
 *
 * The two-models scenario runs ResNet-18 and ResNet-50 (224x224 inputs, torchvision's
 * layer shapes) as their convolutions lowered to implicit GEMMs: a KhxKw convolution
 * from Cin to Cout channels with an output of HxW per image is a GEMM with M = Cout,
 * N = H*W*batch and K = Cin*Kh*Kw. The classifier is a GEMM of M = 1000, N = batch,
 * K = features. Pooling, normalisation and activations are not run: they are a few
 * per cent of these networks' arithmetic.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void xsb_task_push(struct xsb_task *t, const struct xsb_op *op)
{
	struct xsb_op *v = realloc(t->ops, (t->n + 1) * sizeof(*v));
	if (!v)
		xsb_die("out of memory for a task");
	t->ops = v;
	t->ops[t->n++] = *op;
}

void xsb_task_free(struct xsb_task *t)
{
	free(t->ops);
	memset(t, 0, sizeof(*t));
}

void xsb_task_gemms(struct xsb_task *t, int count, int m, int n, int k)
{
	struct xsb_op op = {.kind = XSB_OP_GEMM, .m = m, .n = n, .k = k};
	for (int i = 0; i < count; i++)
		xsb_task_push(t, &op);
}

void xsb_task_streams(struct xsb_task *t, int count)
{
	struct xsb_op op = {.kind = XSB_OP_STREAM, .n = XSB_STREAM_FLOATS};
	for (int i = 0; i < count; i++)
		xsb_task_push(t, &op);
}

void xsb_task_sizes(const struct xsb_task *t, struct xsb_sizes *s)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct xsb_op *op = &t->ops[i];
		if (op->kind == XSB_OP_STREAM) {
			if ((size_t)op->n > s->a)
				s->a = (size_t)op->n;
			if ((size_t)op->n > s->c)
				s->c = (size_t)op->n;
			continue;
		}
		if (op->kind != XSB_OP_GEMM)
			continue;
		size_t a = (size_t)op->m * (size_t)op->k, b = (size_t)op->k * (size_t)op->n,
		       c = (size_t)op->m * (size_t)op->n;
		if (a > s->a)
			s->a = a;
		if (b > s->b)
			s->b = b;
		if (c > s->c)
			s->c = c;
	}
}

double xsb_task_gflop(const struct xsb_task *t)
{
	double f = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->ops[i].kind == XSB_OP_GEMM)
			f += 2.0 * t->ops[i].m * (double)t->ops[i].n * t->ops[i].k;
	return f / 1e9;
}

/* A convolution as an implicit GEMM. @hw: output height = width. */
static void xsb__conv(struct xsb_task *t, int cin, int cout, int ksz, int hw, int batch)
{
	xsb_task_gemms(t, 1, cout, hw * hw * batch, cin * ksz * ksz);
}

void xsb_resnet18(struct xsb_task *t, int batch)
{
	xsb__conv(t, 3, 64, 7, 112, batch);
	int cin = 64, hw = 56;
	static const int width[4] = {64, 128, 256, 512};
	for (int s = 0; s < 4; s++) {
		int w = width[s];
		for (int b = 0; b < 2; b++) {
			int out_hw = (s > 0 && b == 0) ? hw / 2 : hw;
			xsb__conv(t, cin, w, 3, out_hw, batch);
			xsb__conv(t, w, w, 3, out_hw, batch);
			if (cin != w)
				xsb__conv(t, cin, w, 1, out_hw, batch); /* downsample */
			cin = w;
			hw = out_hw;
		}
	}
	xsb_task_gemms(t, 1, 1000, batch, 512);
}

void xsb_resnet50(struct xsb_task *t, int batch)
{
	xsb__conv(t, 3, 64, 7, 112, batch);
	int cin = 64, hw = 56;
	static const int width[4] = {64, 128, 256, 512};
	static const int blocks[4] = {3, 4, 6, 3};
	for (int s = 0; s < 4; s++) {
		int w = width[s], out = 4 * w;
		for (int b = 0; b < blocks[s]; b++) {
			/* torchvision v1.5: the stride is on the 3x3 convolution. */
			int out_hw = (s > 0 && b == 0) ? hw / 2 : hw;
			xsb__conv(t, cin, w, 1, hw, batch);
			xsb__conv(t, w, w, 3, out_hw, batch);
			xsb__conv(t, w, out, 1, out_hw, batch);
			if (b == 0)
				xsb__conv(t, cin, out, 1, out_hw, batch); /* downsample */
			cin = out;
			hw = out_hw;
		}
	}
	xsb_task_gemms(t, 1, 1000, batch, 2048);
}
