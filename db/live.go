package db

// LiveChannel is the PostgreSQL channel the live-update triggers notify (see
// migration 20261129000001_live): 'tablero' when the task board changed,
// 'bandeja:<user ids>' (or 'bandeja:*') when those users' inboxes changed.
const LiveChannel = "pasarela_live"
