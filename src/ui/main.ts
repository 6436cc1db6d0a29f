// Browser entry: sets the palette's CSS custom properties (colours.ts) and mounts the Svelte app into #app
// (App registers the service worker). Nothing else belongs here.
import { mount } from 'svelte';
import App from './App.svelte';
import { applyCssColours } from './colours.ts';

applyCssColours(document.documentElement);

const target = document.getElementById('app');
if (!target) throw new Error('index.html: missing <div id="app"> to mount the UI into');
export default mount(App, { target });
