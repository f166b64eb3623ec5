/*
 * cartpole.h -- private to experiments/: the physics of the pole-balancing
 * benchmarks, exactly as docs/protocols.md gives them, in double precision. No
 * networks here (nothing of nn/), so the physics can be tested on its own.
 *
 * Single pole (Barto, Sutton & Anderson 1983, as in NEAT's cart_pole()):
 * Euler with tau = 0.02 s, g = 9.8, cart 1.0 kg, pole 0.1 kg of half length
 * 0.5 m; failure |x| > 2.4 m or |theta| > 12 degrees (0.2094384 rad).
 *
 * Double pole (Wieland 1991, as Gomez coded it for ESP and NEAT): g = -9.8
 * (the sign convention of the equations), cart 1.0 kg, poles 0.1 kg / 0.5 m
 * and 0.01 kg / 0.05 m (half lengths), pivot friction 0.000002, no cart
 * friction; classic RK4 with h = 0.01 s, applied twice per action with the
 * force held (one benchmark step is 0.02 s); failure |x| > 2.4 m or either
 * |theta| > 36 degrees (0.628329 rad).
 *
 * The failure tests are strict (a state exactly on a bound is still up), as
 * in the original code.
 */
#ifndef TREVO_EXPERIMENTS_CARTPOLE_H
#define TREVO_EXPERIMENTS_CARTPOLE_H

/* ---- single pole ---------------------------------------------------------- */

#define TASK_CART1_FORCE 10.0            /* N, bang-bang */
#define TASK_CART1_X_LIMIT 2.4           /* m */
#define TASK_CART1_THETA_LIMIT 0.2094384 /* rad, 12 degrees (NEAT's constant) */
#define TASK_CART1_TAU 0.02              /* s per step */

struct task_cart1 {
    double x, x_dot, theta, theta_dot; /* m, m/s, rad, rad/s */
};

/* One Euler step of tau = 0.02 s under `force` (N): the accelerations from
 * the state at the start of the step, then x += tau*x_dot, x_dot += tau*xacc,
 * theta += tau*theta_dot, theta_dot += tau*thetaacc (every update reads the
 * old state). */
void task_cart1_step(struct task_cart1 *s, double force);
/* 1 if the cart left the track or the pole fell, else 0. */
int task_cart1_failed(const struct task_cart1 *s);

/* ---- double pole ---------------------------------------------------------- */

#define TASK_CART2_FORCE 10.0           /* N: F = 2 * 10 * (out - 0.5) */
#define TASK_CART2_X_LIMIT 2.4          /* m */
#define TASK_CART2_THETA_LIMIT 0.628329 /* rad, 36 degrees */
#define TASK_CART2_H 0.01               /* s per RK4 step; two per action */
#define TASK_CART2_START_THETA1 0.07    /* rad: the standard start */

/* The state [x, x_dot, theta1, theta1_dot, theta2, theta2_dot]. */
enum { TASK_CART2_DIM = 6 };

/* The time derivative of state st under force: d[0] = st[1], d[2] = st[3],
 * d[4] = st[5], and the accelerations of Wieland's equations in d[1], d[3],
 * d[5]. */
void task_cart2_derivs(const double st[TASK_CART2_DIM], double force, double d[TASK_CART2_DIM]);
/* One classic RK4 step of h seconds, force held. */
void task_cart2_rk4(double st[TASK_CART2_DIM], double force, double h);
/* One benchmark step: two RK4 steps of 0.01 s with the same force. */
void task_cart2_step(double st[TASK_CART2_DIM], double force);
/* 1 if the cart left the track or a pole fell, else 0. */
int task_cart2_failed(const double st[TASK_CART2_DIM]);

#endif
