// Browser entry: mounts the Svelte app into #app (App registers the service worker). Nothing else belongs here.
import { mount } from 'svelte';
import App from './App.svelte';

const target = document.getElementById('app');
if (!target) throw new Error('index.html: missing <div id="app"> to mount the UI into');
export default mount(App, { target });
