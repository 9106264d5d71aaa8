#ifndef ROOST_CLINUXEVENTS_SHIM_H
#define ROOST_CLINUXEVENTS_SHIM_H
// Glibc's Swift overlay does not export these Linux-only headers.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#endif
