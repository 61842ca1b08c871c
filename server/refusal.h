/* A refused request or change (refusal.c): the model's error, not HTTP's. */

#ifndef DYNPROF_REFUSAL_H
#define DYNPROF_REFUSAL_H

/* A refused request or change: the status, the field at fault, the message. */
struct refusal {
	int		 code;
	const char	*field;		/* NULL, a key of the body or fieldbuf */
	char		 fieldbuf[128];
	char		 msg[512];
};

/* refusal.c */
int	 refusal_set(struct refusal *, int, const char *, const char *, ...)
	    __attribute__((format(printf, 4, 5)));
int	 refusal_options(struct refusal *, const char *, const char *);

#endif /* DYNPROF_REFUSAL_H */
