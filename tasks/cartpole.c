/* cartpole.c -- the cart-pole physics of docs/protocols.md (see cartpole.h). The
 * expressions follow the equations as written there, in the order the
 * original C code evaluates them, so that a trajectory under the same forces
 * matches it to the last bits where libm agrees. */
#include "cartpole.h"

#include <math.h>

/* ---- single pole ---------------------------------------------------------- */

#define G1 9.8
#define MASS_CART 1.0
#define MASS_POLE 0.1
#define TOTAL_MASS (MASS_CART + MASS_POLE)
#define LENGTH 0.5 /* half the pole's length */
#define POLEMASS_LENGTH (MASS_POLE * LENGTH)

void task_cart1_step(struct task_cart1 *s, double force)
{
    double costheta = cos(s->theta), sintheta = sin(s->theta);
    double temp = (force + POLEMASS_LENGTH * s->theta_dot * s->theta_dot * sintheta) / TOTAL_MASS;
    double thetaacc = (G1 * sintheta - costheta * temp) /
                      (LENGTH * (4.0 / 3.0 - MASS_POLE * costheta * costheta / TOTAL_MASS));
    double xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
    s->x += TASK_CART1_TAU * s->x_dot;
    s->x_dot += TASK_CART1_TAU * xacc;
    s->theta += TASK_CART1_TAU * s->theta_dot;
    s->theta_dot += TASK_CART1_TAU * thetaacc;
}

int task_cart1_failed(const struct task_cart1 *s)
{
    return s->x < -TASK_CART1_X_LIMIT || s->x > TASK_CART1_X_LIMIT ||
           s->theta < -TASK_CART1_THETA_LIMIT || s->theta > TASK_CART1_THETA_LIMIT;
}

/* ---- double pole ---------------------------------------------------------- */

#define G2 (-9.8)
#define MUP 0.000002 /* pivot friction */
#define MASS_POLE_1 0.1
#define MASS_POLE_2 0.01
#define LENGTH_1 0.5 /* half lengths */
#define LENGTH_2 0.05

void task_cart2_derivs(const double st[TASK_CART2_DIM], double force, double d[TASK_CART2_DIM])
{
    double cos1 = cos(st[2]), sin1 = sin(st[2]);
    double cos2 = cos(st[4]), sin2 = sin(st[4]);
    double gsin1 = G2 * sin1, gsin2 = G2 * sin2;
    double ml1 = LENGTH_1 * MASS_POLE_1, ml2 = LENGTH_2 * MASS_POLE_2;
    double t1 = MUP * st[3] / ml1, t2 = MUP * st[5] / ml2;
    /* F~_i: the effective force of pole i on the cart; m~_i its effective mass */
    double f1 = ml1 * st[3] * st[3] * sin1 + 0.75 * MASS_POLE_1 * cos1 * (t1 + gsin1);
    double f2 = ml2 * st[5] * st[5] * sin2 + 0.75 * MASS_POLE_2 * cos2 * (t2 + gsin2);
    double m1 = MASS_POLE_1 * (1 - 0.75 * cos1 * cos1);
    double m2 = MASS_POLE_2 * (1 - 0.75 * cos2 * cos2);
    double xacc = (force + f1 + f2) / (m1 + m2 + MASS_CART);
    d[0] = st[1];
    d[1] = xacc;
    d[2] = st[3];
    d[3] = -0.75 * (xacc * cos1 + gsin1 + t1) / LENGTH_1;
    d[4] = st[5];
    d[5] = -0.75 * (xacc * cos2 + gsin2 + t2) / LENGTH_2;
}

void task_cart2_rk4(double st[TASK_CART2_DIM], double force, double h)
{
    double k1[TASK_CART2_DIM], k2[TASK_CART2_DIM], k3[TASK_CART2_DIM], k4[TASK_CART2_DIM];
    double y[TASK_CART2_DIM];
    double hh = h * 0.5, h6 = h / 6.0;
    task_cart2_derivs(st, force, k1);
    for (int i = 0; i < TASK_CART2_DIM; i++)
        y[i] = st[i] + hh * k1[i];
    task_cart2_derivs(y, force, k2);
    for (int i = 0; i < TASK_CART2_DIM; i++)
        y[i] = st[i] + hh * k2[i];
    task_cart2_derivs(y, force, k3);
    for (int i = 0; i < TASK_CART2_DIM; i++)
        y[i] = st[i] + h * k3[i];
    task_cart2_derivs(y, force, k4);
    /* y + h/6 (k1 + 2 k2 + 2 k3 + k4), summed as the original code sums it */
    for (int i = 0; i < TASK_CART2_DIM; i++)
        st[i] = st[i] + h6 * (k1[i] + k4[i] + 2.0 * (k3[i] + k2[i]));
}

void task_cart2_step(double st[TASK_CART2_DIM], double force)
{
    task_cart2_rk4(st, force, TASK_CART2_H);
    task_cart2_rk4(st, force, TASK_CART2_H);
}

int task_cart2_failed(const double st[TASK_CART2_DIM])
{
    return st[0] < -TASK_CART2_X_LIMIT || st[0] > TASK_CART2_X_LIMIT ||
           st[2] < -TASK_CART2_THETA_LIMIT || st[2] > TASK_CART2_THETA_LIMIT ||
           st[4] < -TASK_CART2_THETA_LIMIT || st[4] > TASK_CART2_THETA_LIMIT;
}
